/* shard_views.c: placeholder, being written */
#include "postgres.h"
#include "colojoin.h"
