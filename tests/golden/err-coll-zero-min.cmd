coll allgather -t test-2x4 -b 0 -e 1G
