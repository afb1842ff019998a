# SPDX-License-Identifier: MIT
# test-layers.sh's reading of compile_commands.json: one line per compile
# command, its directory, file, output and the directories it searches for
# `#include "..."` (-iquote, then -I; \037 between them), tab-separated.
# Meson writes one field a line, but any layout of the objects will do.
BEGIN { RS = "}" }
	function field(name,   s) {
		if (!match($0, "\"" name "\"[ \t\r\n]*:[ \t\r\n]*\"[^\"]*\""))
			return ""
		s = substr($0, RSTART, RLENGTH)
		sub(/^"[a-z]*"[ \t\r\n]*:[ \t\r\n]*"/, "", s)
		sub(/"$/, "", s)
		return s
	}
	# The command, JSON escapes undone; "" where there is none.
	function command(   s) {
		if (!match($0, /"command"[ \t\r\n]*:[ \t\r\n]*"([^"\\]|\\.)*"/))
			return ""
		s = substr($0, RSTART, RLENGTH)
		sub(/^"command"[ \t\r\n]*:[ \t\r\n]*"/, "", s)
		sub(/"$/, "", s)
		gsub(/\\"/, "\"", s)
		gsub(/\\\\/, "\\", s)
		return s
	}
	function search(cmd,   n, a, i, t, x, q, d) {
		n = split(cmd, a, /[ \t]+/)
		q = d = ""
		for (i = 1; i <= n; i++) {
			t = a[i]
			if (t == "-I" || t == "-iquote") x = a[++i]
			else if (t ~ /^-I./) x = substr(t, 3)
			else if (t ~ /^-iquote./) x = substr(t, 8)
			else continue
			gsub(/^\047|\047$/, "", x)
			if (t ~ /^-iquote/) q = q "\037" x
			else d = d "\037" x
		}
		return substr(q d, 2)
	}
	{ f = field("file"); o = field("output"); d = field("directory")
	  if (f != "" && o != "") print d "\t" f "\t" o "\t" search(command()) }
