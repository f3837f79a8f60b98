simulate --model toy -j1
