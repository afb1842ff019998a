# SPDX-License-Identifier: MIT
# Sourced by the bench scripts: the machine state they change while they
# measure, and give back at exit. Needs log() from the caller.
#   reserve_hugepages BYTES   make that many bytes of 2M pages free
#   reporting_off             stop free page reporting until exit
# The caller's EXIT trap must call restore_machine.

hp=/proc/sys/vm/nr_hugepages
hp_free=/sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages
hp_added=0
pr=/sys/module/page_reporting/parameters/page_reporting_order
pr_old=

# Only the missing pages, so the pool someone else keeps is left alone.
reserve_hugepages() {
	local need=$(( $1 / (2 << 20) )) free old got
	free=$(cat $hp_free)
	(( free >= need )) && return 0
	old=$(cat $hp)
	echo $(( old + need - free )) > $hp
	got=$(cat $hp)
	hp_added=$(( hp_added + got - old ))
	log "hugetlb pool $old -> $got pages"
	(( $(cat $hp_free) >= need ))
}

# Gives back only what we added: others may have changed the pool meanwhile.
release_hugepages() {
	(( hp_added > 0 )) || return 0
	local cur
	cur=$(cat $hp)
	echo $(( cur > hp_added ? cur - hp_added : 0 )) > $hp
	log "hugetlb pool back to $(cat $hp) pages"
	hp_added=0
}

# Free page reporting hands freed guest memory back to the host, which then
# faults it in again: every repetition would pay the host. Off while we measure.
reporting_off() {
	if [ -w $pr ] && (( $(cat $pr) <= 10 )); then
		pr_old=$(cat $pr)
		echo 11 > $pr
		log "free page reporting off (page_reporting_order $pr_old -> 11) until exit"
	fi
}

restore_machine() {
	release_hugepages
	if [ -n "$pr_old" ]; then
		echo "$pr_old" > $pr
		log "page_reporting_order back to $(cat $pr)"
		pr_old=
	fi
}
