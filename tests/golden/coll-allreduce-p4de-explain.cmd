coll allreduce --topology aws-p4de --nodes 2 -b 8 -e 8G -f 8 --explain
