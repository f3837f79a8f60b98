topology test-2x4 --set network.shape=fat_tree --set network.oversubscription=2:1 --nodes 3 --simgrid-xml
