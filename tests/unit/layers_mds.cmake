# mds/'s layers point one way (mds/layers.c): no file includes the header
# of a layer above its own, and mds.h declares no layer's functions.
add_test(NAME layers_mds COMMAND ${CMAKE_SOURCE_DIR}/tools/check-layers-mds.sh ${CMAKE_SOURCE_DIR})
set_tests_properties(layers_mds PROPERTIES LABELS "unit;mds" TIMEOUT 30)
