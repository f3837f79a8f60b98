simulate --sharding-strategy HYBRID_SHARD --nodes 1
