python3 benchmarks/chip_check.py run -o OUT --phases env,points --points s47
