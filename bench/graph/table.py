#!/usr/bin/python3
"""table.py - bench/graph/run.sh's markdown table from its rows (model, target, ablation,
compile seconds, report path) and the reports' dram_accounting (docs/REPORT.md)."""
import json
import sys


def main():
    print("| model | target | ablation | compile s | cycles | bound | cycles/bound | DRAM MB | "
          "compulsory MB | DRAM/compulsory | weights re-read MB | spilled MB | re-read MB | "
          "CPU groups |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for line in open(sys.argv[1]):
        model, target, abl, secs, path = line.rstrip("\n").split("\t")
        r = json.load(open(path))
        a = r["dram_accounting"]
        nc = a["non_compulsory_bytes"]
        cpu = sum(1 for o in r["ops"] if o["placement"] == "cpu")
        mb = lambda b: "%.1f" % (b / 1e6)  # noqa: E731
        print("| %s | %s | %s | %.1f | %d | %d | %.2f | %s | %s | %.2f | %s | %s | %s | %d |" % (
            model, target, abl, float(secs), r["total_cycles"], a["whole_graph_bound_cycles"],
            a["cycles_over_bound"], mb(a["moved_bytes"]), mb(a["compulsory_bytes"]),
            a["moved_over_compulsory"], mb(nc["weights_reread"]), mb(nc["activations_spilled"]),
            mb(nc["activations_reread"] + nc["inputs_reread"]), cpu))


if __name__ == "__main__":
    main()
