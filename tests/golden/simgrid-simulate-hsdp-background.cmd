simulate --model tiny-llama --topology test-2x4 --nodes 8 --network simgrid --sharding-strategy HYBRID_SHARD --set network.shape=rail_optimized --set network.nodes_per_leaf=2 --background-load 0.5
