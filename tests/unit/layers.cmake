# tools/check-layers.sh: client/ keeps its layers (session < cache < data <
# ns < facade, client/types_int.h): no include of a header above, no call of
# a function defined above (issue 18).  Plain sh and awk over the sources.
add_test(NAME check_client_layers
         COMMAND sh ${CMAKE_SOURCE_DIR}/tools/check-layers.sh ${CMAKE_SOURCE_DIR}/client)
set_tests_properties(check_client_layers PROPERTIES LABELS "unit;client" TIMEOUT 60)
