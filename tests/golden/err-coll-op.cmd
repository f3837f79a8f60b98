coll allgahter
