/* planner.c: placeholder, being written */
#include "postgres.h"
#include "colojoin.h"

void
cj_planner_init(void)
{
}
