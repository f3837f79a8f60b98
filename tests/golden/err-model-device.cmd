simulate --model /dev/zero
