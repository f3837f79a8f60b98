schedule --model toy --auto-wrap-policy size --min-num-params 1e6 --nodes 1 --gpus-per-node 2 --iterations 1
