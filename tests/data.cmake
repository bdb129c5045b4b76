# Tests of the data room (test_data itself is registered in nn.cmake).
ds_unit_test(test_generators ${CMAKE_CURRENT_SOURCE_DIR}/test_generators.c ds_data ds_util)
ds_unit_test(test_loaders ${CMAKE_CURRENT_SOURCE_DIR}/test_loaders.c ds_data ds_util
             ${HDF5_C_LIBRARIES})
target_include_directories(test_loaders PRIVATE ${HDF5_C_INCLUDE_DIRS})
# issue 26: CIFAR-10/100 binary and SVHN .mat loaders on files written by the test
ds_unit_test(test_data_images ${CMAKE_CURRENT_SOURCE_DIR}/test_data_images.c ds_data ds_util ZLIB::ZLIB)
# ... and the same kinds through plan/run: scipy's .mat files, plan errors, a
# CNN sweep on generated CIFAR-10 batches replayed in PyTorch (tests/data_images.sh)
ds_script_test(data_images data_images.sh)
set_tests_properties(data_images PROPERTIES DEPENDS test_data_images)
