#!/bin/bash
# Chip call E: every solution and corpus kernel at its visible cases (docs/chip-outcomes.md).
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
mkdir -p $OUT/e
PIP_CONFIG_FILE=/dev/null timeout 60 python3 -m pip install -q --user --no-index --find-links .chip/wheels \
  'pallas-autograder[review]' > $OUT/e/install.log 2>&1
echo "python3 benchmarks/chip_check.py run -o OUT --phases env,outcomes" > $OUT/e/command.txt
timeout 200 python3 benchmarks/chip_check.py run -o $OUT/e --prepared .chip --phases env,outcomes \
  --budget-s $(( 185 - ($(date +%s) - T0) )) > $OUT/e/log.txt 2>&1
echo "chip_check rc=$? at $(( $(date +%s) - T0 )) s" >> $OUT/e/log.txt
# A student's notebook's last cell on the chip (what a Colab TPU runtime would run): the add
# solution, and a matmul kernel the TPU compiler refuses (blocks of 64 lanes).
for a in add matmul; do
  (timeout 40 python3 .chip/notebook_last_cell.py .chip/handout-$a $a.ipynb) > $OUT/e/notebook-$a.log 2>&1
  echo "notebook $a rc=$? at $(( $(date +%s) - T0 )) s" >> $OUT/e/log.txt
done
tar czf $OUT/callE.tgz -C $OUT e
tail -5 $OUT/e/log.txt
