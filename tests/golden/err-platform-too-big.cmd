topology test-2x4 --nodes 5000 --simgrid-xml
