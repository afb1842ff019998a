# SPDX-License-Identifier: MIT
# test-layers.sh's include and search checks: reads L (rank, folder), F
# (product file), T (command index, source) and S (command index, search
# directory) lines, tab-separated; prints the read line and the undeclared,
# upward and across include findings and the upward and across search
# findings (src: the source dir, a real path).
function folder(f) { sub(/\/[^\/]*$/, "", f); return f }
# p with its "." and ".." resolved, by name (the dirs are real paths).
function norm(p,   n, a, i, m, st, o) {
	n = split(p, a, "/"); m = 0
	for (i = 1; i <= n; i++) {
		if (a[i] == "" || a[i] == ".") continue
		if (a[i] == "..") { if (m) m--; continue }
		st[++m] = a[i]
	}
	o = ""
	for (i = 1; i <= m; i++) o = o "/" st[i]
	return o == "" ? "/" : o
}
function exists(p,   line) {
	if (!(p in ex)) { ex[p] = (getline line < p) >= 0; close(p) }
	return ex[p]
}
# f (relative to src): its `#include "..."` names, read once.
function scan(f,   p, line, n) {
	if (f in nq) return
	n = 0; p = src "/" f
	while ((getline line < p) > 0)
		if (line ~ /^[ \t]*#[ \t]*include[ \t]*"[^"]+"/) {
			sub(/^[^"]*"/, "", line); sub(/".*$/, "", line)
			q[f, ++n] = line
		}
	close(p); nq[f] = n
}
# name as included from f under command t ("": every command): a path or "".
function resolve(f, name, t,   p, k) {
	if (name ~ /^\//) return exists(name) ? norm(name) : ""
	p = norm(src "/" folder(f) "/" name)
	if (exists(p)) return p
	for (k = 1; k <= ns[t]; k++) {
		p = norm(sd[t, k] "/" name)
		if (exists(p)) return p
	}
	return ""
}
# The product file at path r, relative to src; "" when r is not one.
function product(r,   rel) {
	if (substr(r, 1, length(src) + 1) != src "/") return ""
	rel = substr(r, length(src) + 2)
	return rel in prod ? rel : ""
}
function edge(f, name, rel) {
	found[f, name] = 1
	if (rel == f || ((f, rel) in ie)) return
	ie[f, rel] = 1; ne++; from[ne] = f; to[ne] = rel; how[ne] = name
	adj[f, ++nadj[f]] = rel
}
# Whether f includes g, directly or through other files.
function reaches(f, g,   stk, top, h, k, v, seen3) {
	top = 0; stk[++top] = f; seen3[f] = 1
	while (top) {
		h = stk[top--]
		for (k = 1; k <= nadj[h]; k++) {
			v = adj[h, k]
			if (v == g) return 1
			if (!(v in seen3)) { seen3[v] = 1; stk[++top] = v }
		}
	}
	return 0
}
# The product folder of search path p, "" when p is none.
function searched(p,   rel) {
	if (substr(p, 1, length(src) + 1) != src "/") return ""
	rel = substr(p, length(src) + 2)
	return rel in rank ? rel : ""
}
# Every file command t reaches from its source f, each include resolved.
function walk(t, f,   stk, top, g, k, rel) {
	top = 0; stk[++top] = f; vis[t, f] = 1
	while (top) {
		g = stk[top--]; reached[g] = 1; scan(g)
		for (k = 1; k <= nq[g]; k++) {
			rel = product(resolve(g, q[g, k], t))
			if (rel == "") continue
			edge(g, q[g, k], rel)
			if (!((t, rel) in vis)) { vis[t, rel] = 1; stk[++top] = rel }
		}
	}
}
$1 == "L" { rank[$3] = $2 + 0; next }
$1 == "F" { if ($2 != "" && !($2 in prod)) { prod[$2] = 1; pf[++nf] = $2 }; next }
$1 == "T" { tu[++nt] = $2; tsrc[$2] = $3; next }
$1 == "S" {
	sd[$2, ++ns[$2]] = $3
	if (!($3 in seen)) { seen[$3] = 1; sd["", ++ns[""]] = $3 }
	next
}
END {
	for (i = 1; i <= nt; i++) walk(tu[i], tsrc[tu[i]])
	for (i = 1; i <= nf; i++) {
		f = pf[i]
		if (f in reached) continue
		scan(f)
		for (k = 1; k <= nq[f]; k++) {
			rel = product(resolve(f, q[f, k], ""))
			if (rel != "") edge(f, q[f, k], rel)
		}
	}
	nh = nother = 0
	for (i = 1; i <= nf; i++) {
		f = pf[i]; nh += f ~ /\.h$/
		for (k = 1; k <= nq[f]; k++) nother += !((f, q[f, k]) in found)
	}
	print "read: " nf " product files (" nf - nh " sources, " nh " headers), " \
		ne + 0 " includes between them, " nother + 0 \
		" of other files (generated, system, or not found)"
	if (ne == 0)
		print "error: no include between product files found: nothing to check"
	for (i = 1; i <= nf; i++)
		if (pf[i] ~ /\.h$/ && !(folder(pf[i]) in rank))
			print "undeclared: " pf[i] " (folder " folder(pf[i]) " is not a layer)"
	for (i = 1; i <= ne; i++) {
		fa = folder(from[i]); fb = folder(to[i])
		if (fa == fb) {
			# Within a folder: header to header, against its unit.
			if (from[i] !~ /\.h$/ || to[i] !~ /\.h$/) continue
			u = substr(to[i], 1, length(to[i]) - 2) ".c"
			if ((u in prod) && reaches(u, from[i]))
				print "upward include: " from[i] " -> " to[i] " (\"" how[i] "\"; " \
					u " includes " from[i] ")"
			continue
		}
		if (!(fa in rank) || !(fb in rank)) continue
		if (rank[fb] > rank[fa])
			print "upward include: " from[i] " -> " to[i] " (\"" how[i] "\")"
		else if (rank[fb] == rank[fa])
			print "across include: " from[i] " -> " to[i] " (\"" how[i] "\")"
	}
	# The build says the layers: no command searches above or across.
	for (i = 1; i <= nt; i++) {
		t = tu[i]; fa = folder(tsrc[t])
		if (!(fa in rank)) continue
		for (k = 1; k <= ns[t]; k++) {
			fb = searched(sd[t, k])
			if (fb == "" || fb == fa || ((fa, fb) in told)) continue
			told[fa, fb] = 1
			if (rank[fb] > rank[fa])
				print "upward search: " tsrc[t] " searches " fb
			else if (rank[fb] == rank[fa])
				print "across search: " tsrc[t] " searches " fb
		}
	}
}
