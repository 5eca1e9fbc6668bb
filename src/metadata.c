/* metadata.c: placeholder, being written */
#include "postgres.h"
#include "colojoin.h"

void
cj_metadata_init(void)
{
}
