# SPDX-License-Identifier: MIT
# test-layers.sh's call check: reads L (rank, folder), M (object, source),
# N (source), D (object, defined symbol) and U (object, undefined symbol)
# lines, tab-separated; prints the read line and the undeclared, upward,
# across and cycle findings (nobjs: how many objects were read).
function folder(f) { sub(/\/[^\/]*$/, "", f); return f }
$1 == "L" { rank[$3] = $2 + 0; next }
$1 == "M" { src_of[$2] = $3; next }
$1 == "N" { node[++n] = $2; idx[$2] = n; next }
$1 == "D" { f = src_of[$2]; if (!((f, $3) in defd)) { defd[f, $3] = 1; defs[$3] = defs[$3] " " idx[f] }; next }
$1 == "U" { nu++; ucall[nu] = idx[src_of[$2]]; usym[nu] = $3; next }
END {
	# The calls between files, each with the symbols it goes by.
	for (k = 1; k <= nu; k++) {
		a = ucall[k]; s = usym[k]
		if (!(s in defs)) continue
		nd = split(defs[s], ds, " ")
		for (m = 1; m <= nd; m++) {
			b = ds[m] + 0
			if (a == b || ((a, b, s) in seen)) continue
			seen[a, b, s] = 1
			if (!((a, b) in e)) { e[a, b] = 1; nedges++ }
			if ((a, b) in syms) syms[a, b] = syms[a, b] ", " s
			else syms[a, b] = s
		}
	}
	print "read: " nobjs " objects of " n " product sources, " nedges + 0 " calls between files"
	if (nedges == 0)
		print "error: no call between files found: nothing to check"

	for (i = 1; i <= n; i++)
		if (!(folder(node[i]) in rank))
			print "undeclared: " node[i] " (folder " folder(node[i]) " is not a layer)"

	for (i = 1; i <= n; i++) for (j = 1; j <= n; j++) {
		if (!((i, j) in e)) continue
		fa = folder(node[i]); fb = folder(node[j])
		if (fa == fb || !(fa in rank) || !(fb in rank)) continue
		if (rank[fb] > rank[fa])
			print "upward: " node[i] " -> " node[j] " (" syms[i, j] ")"
		else if (rank[fb] == rank[fa])
			print "across: " node[i] " -> " node[j] " (" syms[i, j] ")"
	}

	# Who reaches whom (Floyd-Warshall), then the sets of files that
	# reach one another, each named by its first file.
	for (i = 1; i <= n; i++) for (j = 1; j <= n; j++) if ((i, j) in e) r[i, j] = 1
	for (k = 1; k <= n; k++) for (i = 1; i <= n; i++) {
		if (!((i, k) in r)) continue
		for (j = 1; j <= n; j++) if ((k, j) in r) r[i, j] = 1
	}
	for (i = 1; i <= n; i++) {
		for (j = 1; j <= n; j++)
			if (j == i || (((i, j) in r) && ((j, i) in r))) break
		lead[i] = j; size[j]++
	}
	# Every pair that calls each other, then for the files of a larger
	# set not yet on a printed cycle, the shortest cycle through each.
	for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++)
		if (((i, j) in e) && ((j, i) in e)) {
			print "cycle: " node[i] " <-> " node[j] " (" syms[i, j] " / " syms[j, i] ")"
			onc[i] = onc[j] = 1
		}
	for (l = 1; l <= n; l++) {
		if (lead[l] != l || size[l] < 3) continue
		line = ""
		for (i = l; i <= n; i++) if (lead[i] == l) line = line " " node[i]
		print "cycle group: " size[l] " files reach one another:" line
		for (i = l; i <= n; i++) if (lead[i] == l && !(i in onc)) shortest_cycle(i)
	}
}
# Breadth first from s, within its set, back to s.
function shortest_cycle(s,   q, head, tail, u, v, par, seen2, path, m, t, txt, st) {
	head = 1; tail = 0; q[++tail] = s; seen2[s] = 1
	while (head <= tail) {
		u = q[head++]
		for (v = 1; v <= n; v++) {
			if (!((u, v) in e)) continue
			if (v == s) {
				m = 0
				for (t = u; t != s; t = par[t]) path[++m] = t
				path[++m] = s
				txt = node[s]; st = ""; t = s
				for (; m >= 1; m--) {
					if (path[m] == s) continue
					txt = txt " -> " node[path[m]]
					st = st (st == "" ? "" : " / ") syms[t, path[m]]
					onc[path[m]] = 1; t = path[m]
				}
				txt = txt " -> " node[s]
				st = st (st == "" ? "" : " / ") syms[t, s]
				onc[s] = 1
				print "cycle: " txt " (" st ")"
				return
			}
			if (lead[v] != lead[s] || (v in seen2)) continue
			seen2[v] = 1; par[v] = u; q[++tail] = v
		}
	}
}
