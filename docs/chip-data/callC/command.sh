#!/bin/bash
# Chip call C: what call B had no time left for (the blind and fit2 points, softmax and matmul timed).
# `speed` on all five assignments from review sites graded on a CPU machine, the blind
# device-time points, and every solution and corpus kernel's outcome.
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
mkdir -p $OUT/c
PIP_CONFIG_FILE=/dev/null timeout 60 python3 -m pip install -q --user --no-index --find-links .chip/wheels \
  'pallas-autograder[review]' > $OUT/c/install.log 2>&1
echo "python3 benchmarks/chip_check.py run -o OUT --prepared .chip --phases env,points,speed --slugs softmax,matmul --points blind,fit2" > $OUT/c/command.txt
timeout 405 python3 benchmarks/chip_check.py run -o $OUT/c --prepared .chip \
  --phases env,points,speed --slugs softmax,matmul --points blind,fit2 --budget-s $(( 385 - ($(date +%s) - T0) )) > $OUT/c/log.txt 2>&1
echo "chip_check rc=$? at $(( $(date +%s) - T0 )) s" >> $OUT/c/log.txt
find $OUT/c -name divergence -type d -prune -exec rm -rf {} +
tar czf $OUT/callC.tgz -C $OUT c
tail -3 $OUT/c/log.txt
