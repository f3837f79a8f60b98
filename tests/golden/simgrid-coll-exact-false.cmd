coll allgather -t test-2x4 -n 4 -b 64M -e 64M --network simgrid --exact false --set network.shape=fat_tree --set network.oversubscription=2:1 --set network.placement=spread
