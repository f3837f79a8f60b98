coll allgather -t test-2x4 -i 1 -e 1G
