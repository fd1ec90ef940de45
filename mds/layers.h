/*
 * layers.h - private to mds/: connects the layers (layers.c).
 */
#ifndef LOLIGO_MDS_LAYERS_H
#define LOLIGO_MDS_LAYERS_H

#include "mds/mds.h"

/*
 * mds_layers_wire - fill every ops table a lower layer calls up through.
 * Call once, first, before any other mds function runs.
 */
void mds_layers_wire(struct mds *m);

#endif
