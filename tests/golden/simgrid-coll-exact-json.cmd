coll allgather -t test-2x4 -n 8 -b 1M -e 1G -f 32 --network simgrid --exact --format json
