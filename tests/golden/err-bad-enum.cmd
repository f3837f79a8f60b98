simulate --sharding-strategy FULL
