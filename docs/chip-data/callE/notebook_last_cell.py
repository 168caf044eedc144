"""Run a handout notebook's last code cell as Jupyter would (in the handout folder)."""
import json, os, sys
folder, nb = sys.argv[1], sys.argv[2]
os.chdir(folder)
sys.path.insert(0, os.getcwd())
cells = [c for c in json.load(open(nb))["cells"] if c["cell_type"] == "code"]
src = "".join(cells[-1]["source"])
print("--- the notebook's last cell ---\n" + src + "\n--- its output ---", flush=True)
exec(compile(src, nb + ":last cell", "exec"), {"__name__": "__main__"})
