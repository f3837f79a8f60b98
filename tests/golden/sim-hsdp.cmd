simulate --model tiny-llama --topology test-2x4 --sharding-strategy HYBRID_SHARD --param-dtype bf16 --reduce-dtype fp32
