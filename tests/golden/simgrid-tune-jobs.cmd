tune --model toy --topology test-2x4 --auto-wrap-policy size --max-grad-accum 2 --jobs 4 --network simgrid --set network.shape=fat_tree
