/* connection.c: placeholder, being written */
#include "postgres.h"
#include "colojoin.h"

void
cj_connection_init(void)
{
}
