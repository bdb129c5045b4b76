# Worker teams: train.ranks_per_point (issue 4; tests/teams.sh).
ds_script_test(teams teams.sh)
