coll allgather --topology aws-p5 --nodes 2 -b 1M -e 16G -f 4 --explain
