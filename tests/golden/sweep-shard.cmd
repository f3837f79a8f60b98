sweep --model tiny-llama --topology test-2x4 --vary sharding_strategy=FULL_SHARD,HYBRID_SHARD --vary nodes=1,2 --shard 1/3 --jobs 2
