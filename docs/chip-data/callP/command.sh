#!/bin/bash
# Chip call P (session 9), on the lent v5e: `bash docs/chip-data/callP/command.sh` from the checkout's root,
# carrying .chip47 (call K's wheels). First the tests marked tpu; then the DMA kernel that waits on the
# wrong semaphore (dma_scale/corpus/dma_wrong_semaphore.py; skip.json lists every other file), last,
# since it hangs TPU interpret mode and a chip it hangs would end the call.
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
P=/tmp/callP/p
rm -rf /tmp/callP; mkdir -p $P
pack() { tar czf $OUT/callP.tgz.part -C /tmp/callP p 2>/dev/null && mv $OUT/callP.tgz.part $OUT/callP.tgz; }
echo "bash docs/chip-data/callP/command.sh" > $P/command.txt
export PYTHONUSERBASE=/tmp/callP-user
(cd .chip47/route && PIP_CONFIG_FILE=/dev/null timeout 90 python3 -m pip install --user --no-index \
  --find-links wheels 'pallas-autograder[review]' 2>&1 | tail -2) > $P/install.log 2>&1
echo "install rc=$? at $(( $(date +%s) - T0 )) s" >> $P/phases.log
timeout 150 python3 -m pytest -q -p no:cacheprovider -o addopts='' -m tpu tests > $P/tpu-tests.log 2>&1
echo "tpu tests rc=$? at $(( $(date +%s) - T0 )) s" >> $P/phases.log
pack
timeout 120 python3 benchmarks/chip_check.py run -o $P/outcomes --phases env,outcomes \
  --outcomes-skip docs/chip-data/callP/skip.json --call-s 30 --budget-s 90 --device tpu > $P/outcomes.log 2>&1
echo "outcomes rc=$? at $(( $(date +%s) - T0 )) s" >> $P/phases.log
pack
cat $P/phases.log
