coll allgather --topology test-2x4 -g 1 --nodes 4 -b 8 -e 1G -f 64
