coll reducescatter -t test-2x4 -n 8 -b 1M -e 1G -f 32 --network simgrid --set network.shape=fat_tree --set network.nodes_per_leaf=2 --set network.oversubscription=4:1 --set network.placement=spread
