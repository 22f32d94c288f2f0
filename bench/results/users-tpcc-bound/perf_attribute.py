#!/usr/bin/env python3
"""perf_attribute.py SCRIPT NTX: attribute the backend samples of
`perf script -F ip,sym,dso --comm postgres` output to fpsketch areas, by the
innermost fpsketch frame of each sample (heap work called by a thin
fpsketch wrapper is counted apart)."""
import sys, collections
PASS={"fps_executor_run","fps_executor_start","fps_executor_finish","fps_planner","fps_process_utility"}
WRAP_HEAP={("fps_index_fetch_tuple","[unknown]"),("fps_rowlock_tuple_update","[unknown]"),("fps_rowlock_tuple_lock","[unknown]"),("fps_rowlock_tuple_delete","[unknown]"),("fps_tuple_insert","[unknown]"),("fps_tuple_update","[unknown]"),("wait_unless_cycle","XactLockTableWait"),("fps_tuple_fetch_row_version","[unknown]"),("fps_tuple_delete","[unknown]"),("fps_scan_bitmap_next_tuple","[unknown]"),("fps_scan_getnextslot","[unknown]")}
cats=[("pins (incref/decref, sketch seeds and merges, eviction)",["incref","decref","merge_and_unlink","map_find","clock_evict","sketch","readers","try_access","pin_access","XXH","table_hash","apply_floor"]),
("gap keys (scan reads, look-agains, PRE_COMMIT walks)",["gap","walk","look_again","examine_index_entry","compare_values","entry_hashes","keys_after","compare_by_index"]),
("predicate and prefix keys, point lookups",["predicate","point_lookup","fresher_snapshot","prefix"]),
("row tracking (keys, groups, reads, writes)",["track","key_from_slot","statement_groups","write_row_groups","tictoc_read","tictoc_write","group_key","learn","refetch","write_is_tracked","tracking_active","txn_rel","cc_"]),
("row-lock waits (cycle check)",["rowlock","wait_for_row_lock","conflicting_row_locker","wait_unless_cycle","wait_closes"]),
("commit (validate, install, commit_ts)",["validate","commit","least_commit_ts","abort_if_doomed","xact_callback","install"]),
("per statement (executor hooks, scan setup)",["refuse_index_only","executor","index_fetch_begin","index_fetch_end","index_fetch_reset","scan_begin","scan_end","pathlist","enter_utility","relation_info","reevaluat"])]
c=collections.Counter(); tot=0; heapwrap=0
def cat(sym):
    for name,keys in cats:
        if any(k in sym for k in keys): return name
    return "other fpsketch"
def flush(st):
    global tot, heapwrap
    if not st: return
    tot+=1
    for i,(sym,dso) in enumerate(st):
        if "fpsketch.so" in dso and sym not in PASS:
            callee = "self" if i==0 else st[i-1][0]
            if (sym,callee) in WRAP_HEAP: heapwrap+=1; return
            c[cat(sym)]+=1; return
st=[]
for line in open(sys.argv[1]):
    line=line.strip()
    if not line:
        flush(st); st=[]; continue
    p=line.split(None,1)
    if len(p)<2: continue
    rest=p[1]; k=rest.rfind(" (")
    st.append((rest[:k], rest[k+2:-1]))
flush(st)
n=int(sys.argv[2])
own=sum(c.values())
print(f"backend samples {tot}, in fpsketch code {own} ({100*own/tot:.1f}%), heap work under fpsketch wrappers {heapwrap}")
for k,v in c.most_common(): print(f"| {k} | {v} | {100*v/tot:.1f}% |")
