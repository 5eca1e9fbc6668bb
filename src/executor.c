/* executor.c: placeholder, being written */
#include "postgres.h"
#include "colojoin.h"

void
cj_executor_init(void)
{
}
