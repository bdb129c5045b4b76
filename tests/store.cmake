# Store room: unit test of the HDF5 store and a check of the file with the
# HDF5 command-line tools and h5py (tests/store_tools.sh).
ds_unit_test(test_store ${CMAKE_CURRENT_SOURCE_DIR}/test_store.c ds_store ds_util)
ds_script_test(store_tools store_tools.sh)
# Bit rot (issue 11): checksums, `dynsweep verify`, the corrupted-bytes campaign,
# damaged checkpoints and torn/foreign journals (tests/verify.sh).
ds_script_test(verify verify.sh)
# Map stores (issue 13): create, tiles, SIGKILLed writer + resume, bytes per
# point, a corrupted chunk (tests/test_mapstore.c); h5py and `dynsweep map`
# on a map store (tests/mapstore.sh).
ds_unit_test(test_mapstore ${CMAKE_CURRENT_SOURCE_DIR}/test_mapstore.c ds_store ds_util)
target_include_directories(test_mapstore PRIVATE ${HDF5_C_INCLUDE_DIRS})
ds_script_test(mapstore mapstore.sh)
