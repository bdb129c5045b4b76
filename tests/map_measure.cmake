# map_measure (issue 24, item 3): map pixels carry the study's measure; map.early_stop
ds_script_test(map_measure map_measure.sh)
