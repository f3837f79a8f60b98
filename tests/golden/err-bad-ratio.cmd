topology test-2x4 --set network.oversubscription=3:2
