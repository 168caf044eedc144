#!/bin/bash
# Chip call K (issue 47), on the lent v5e, in one command: `bash docs/chip-data/callK/command.sh`
# from the checkout's root, carrying .chip47 (made by `benchmarks/chip/route.py .chip47/route`).
#  1. the TPU guide's TPU route verbatim: a folder holding only review-site/, export.zip, wheels/ and
#     assignments/, `pip install --user --no-index --find-links wheels`, then the TPU guide's `speed`;
#  2. points: issue 47's styles (benchmarks/chip/styles.py; ids s47/...), device time each;
#  3. --fresh-process on the same class (what each submission pays before its first timed call);
#  4. outcomes of the corpus files no chip ran yet (call E ran the others);
#  5. the open probe: a worker's start phase by phase, a second opener while the chip is held,
#     a prestarted process's open, JAX's persistent compilation cache across processes.
# Every phase has its own limit, and none may run past 540 s from the start.
set -u
export PYTHONUNBUFFERED=1
DEV=${DEV:-tpu}             # a CPU rehearsal: DEV=cpu (the chip call sets nothing)
SPEED_DEV=""; CC_DEV="--device tpu"
if [ "$DEV" != tpu ]; then SPEED_DEV="--device $DEV"; CC_DEV="--device $DEV --small"; fi
REPO=$(pwd)
T0=$(date +%s)
K=/tmp/callK/k             # packed into $OUT/callK.tgz after every phase (one file comes back)
rm -rf /tmp/callK; mkdir -p $K
left() { echo $(( 540 - ($(date +%s) - T0) )); }
cap() { local l=$(( $(left) - 8 )); if [ $l -lt $1 ]; then echo $(( l > 1 ? l : 1 )); else echo $1; fi; }
pack() { tar czf $OUT/callK.tgz.part -C /tmp/callK k 2>/dev/null && mv $OUT/callK.tgz.part $OUT/callK.tgz; }
stamp() { echo "$1 rc=$2 at $(( $(date +%s) - T0 )) s" >> $K/phases.log; }
echo "bash docs/chip-data/callK/command.sh" > $K/command.txt
echo "python3 benchmarks/chip_check.py run -o OUT --phases env,points --points s47" > $K/cc-points.cmd

# 1. the TPU guide's route, in a folder with only the four things it names
R=/tmp/route-k
rm -rf $R /tmp/route-k-user
mkdir -p $R
cp -r .chip47/route/review-site .chip47/route/export.zip .chip47/route/wheels .chip47/route/assignments $R/
# A fresh user site (a warm machine's earlier install is not reused); every phase after uses it.
export PYTHONUSERBASE=/tmp/route-k-user
(
  echo "host: $(python3 --version 2>&1); PYTHONPATH=${PYTHONPATH:-}; HOME=$HOME; whoami: $(whoami)"
  echo "the folder: $(ls -A $R | tr '\n' ' ')"
  cd $R
  T1=$(date +%s)
  PIP_CONFIG_FILE=/dev/null timeout $(cap 90) python3 -m pip install --user --no-index --find-links wheels \
    'pallas-autograder[review]' 2>&1 | tail -4
  echo "install rc=${PIPESTATUS[0]} in $(( $(date +%s) - T1 )) s"
  python3 -c 'import autograder, jax; print("autograder from", autograder.__file__, "jax", jax.__version__)'
) > $K/route-install.log 2>&1
stamp route-install $?
(cd $R && timeout $(cap 150) python3 -m autograder speed export.zip -a add --assignments assignments -o speed-out \
  --review review-site $SPEED_DEV) > $K/route-speed.log 2>&1
stamp route-speed $?
cp -r $R/speed-out $K/route-speed-out 2>/dev/null
pack

# 2. env and points
timeout $(cap 200) python3 benchmarks/chip_check.py run -o $K/points --phases env,points --points s47 $CC_DEV \
  --budget-s $(( $(cap 200) - 15 )) > $K/points.log 2>&1
stamp points $?
pack

# 3. one process per submission, the same class and site (the installed grader)
(cd $R && timeout $(cap 170) python3 -m autograder speed export.zip -a add --assignments assignments \
  -o speed-fresh --review review-site --fresh-process --call-timeout 15 --max-seconds 4 $SPEED_DEV) > $K/fresh-speed.log 2>&1
stamp fresh-speed $?
cp -r $R/speed-fresh $K/fresh-speed-out 2>/dev/null
pack

# 4. the corpus files no chip ran yet (each that hangs or dies costs its worker)
timeout $(cap 130) python3 benchmarks/chip_check.py run -o $K/outcomes --phases outcomes \
  --outcomes-skip docs/chip-data/callE/outcomes.json --call-s 20 --budget-s $(( $(cap 130) - 12 )) $CC_DEV \
  > $K/outcomes.log 2>&1
stamp outcomes $?
pack

# 5. the open probe
timeout $(cap 100) python3 benchmarks/chip/open_probe.py -o $K/open-probe.json --budget-s $(( $(cap 100) - 15 )) \
  --platform $DEV \
  > $K/open-probe.log 2>&1
stamp open-probe $?
find $K -name divergence -type d -prune -exec rm -rf {} +
echo "total $(( $(date +%s) - T0 )) s" >> $K/phases.log
pack
cat $K/phases.log
