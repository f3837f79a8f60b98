topology test-2x4 --nodes 300 --simgrid-xml
