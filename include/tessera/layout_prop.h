/* layout_prop.h — how tessera_Pset_layout (include/tessera/tessera.h) hands a dataset's tile order to
 * the connector: a property of this name inserted into the dcpl, holding the order's name
 * (NUL-terminated, at most TESSERA_LAYOUT_PROP_SIZE - 1 characters).  Native HDF5 ignores
 * it; the connector reads it in dataset_create (dcpl.h, apply_layout) and validates the
 * name there (docs/layouts.md).  C, shared by the connector and libtessera_api. */
#ifndef TESSERA_LAYOUT_PROP_H
#define TESSERA_LAYOUT_PROP_H

#define TESSERA_LAYOUT_PROP "tessera_layout"
#define TESSERA_LAYOUT_PROP_SIZE 32

#endif
