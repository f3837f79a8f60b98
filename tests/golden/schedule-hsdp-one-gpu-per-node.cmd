schedule --model toy --micro-batch 1 --seq-len 1 --topology test-2x4 --nodes 2 --gpus-per-node 1 --sharding-strategy HYBRID_SHARD --auto-wrap-policy none --iterations 1
