#!/bin/bash
# Chip call A: the README's TPU route, the stage on add (with a kernel that halts and one
# that hangs at the speed size), the tpu tests, then env/numerics/device-time points.
set -u
export PYTHONUNBUFFERED=1
REPO=$(pwd)
T0=$(date +%s)
left() { echo $(( 570 - ($(date +%s) - T0) )); }
pack() { tar czf $OUT/callA.tgz -C $OUT --exclude=callA.tgz . 2>/dev/null; }
mkdir -p $OUT/r
{
  echo "python3: $(python3 --version 2>&1); PYTHONPATH=$PYTHONPATH; HOME=$HOME; whoami: $(whoami)"
  python3 -c 'import platform; print(platform.libc_ver())'
  PIP_CONFIG_FILE=/dev/null timeout 60 python3 -m pip install --user --no-index --find-links .chip/wheels \
    'pallas-autograder[review]' 2>&1 | tail -6
  echo "install rc=${PIPESTATUS[0]}"
  (cd /tmp && python3 -c 'import autograder, jax; print("autograder from", autograder.__file__, "jax", jax.__version__)')
  python3 -m pip list 2>/dev/null | grep -iE "^(jax|jaxlib|libtpu|numpy|ml.dtypes|jinja2|pyyaml|markdown|datasketch|scipy|pallas|pytest) "
} > $OUT/r/install.log 2>&1
pack
if (cd /tmp && python3 -c 'import autograder') 2>/dev/null; then RUNAT=/tmp; else RUNAT=$REPO; fi
(cd $RUNAT && timeout 200 python3 -m autograder speed $REPO/.chip/exp-add -a add --assignments $REPO/assignments \
   -o $OUT/r/speed-add --review $REPO/.chip/site-add --call-timeout 15 --max-seconds 4 --device ${DEV:-tpu}) > $OUT/r/speed-add.log 2>&1
echo "speed rc=$? at $(( $(date +%s) - T0 )) s" >> $OUT/r/speed-add.log
rm -rf $OUT/r/speed-add/divergence
pack
timeout 45 python3 -m pytest -q -p no:cacheprovider -o addopts="" tests/test_tpu_stage.py -m tpu > $OUT/r/pytest.log 2>&1
echo "pytest rc=$? at $(( $(date +%s) - T0 )) s" >> $OUT/r/pytest.log
pack
B=$(( $(left) - 25 ))
timeout $(( B + 20 )) python3 benchmarks/chip_check.py -o $OUT/r/cc --phases env,numerics,points,outcomes --budget-s $B --device ${DEV:-tpu} ${SMALL:-} > $OUT/r/cc.log 2>&1
echo "chip_check rc=$? at $(( $(date +%s) - T0 )) s" >> $OUT/r/cc.log
pack
echo "total $(( $(date +%s) - T0 )) s"
