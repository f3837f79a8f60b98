simulate --model toy --topology dgx-a100-80g --auto-wrap-policy size --min-num-params 1e6 --gpus-per-node 2 --format json
