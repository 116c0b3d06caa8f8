# terrarium reconciler, once a minute: the cron alternative to terrarium-reconciler.timer (use
# one of them). Uncomment the line to use cron. Each run claims due provisioning intents and
# stops taking new ones after 55 s; overlapping runs are safe (leases, SKIP LOCKED). When an
# intent failed the run exits non-zero and the echo after || prints, so cron mails it.
SHELL=/bin/sh
PATH=/usr/local/sbin:/usr/local/bin:/sbin:/bin:/usr/sbin:/usr/bin

#* * * * *  terrarium  [ -x /usr/bin/terrarium-reconciler ] && { /usr/bin/terrarium-reconciler -c /etc/terrarium/terrarium.ini --once --max-seconds 55 --metrics-file /var/lib/terrarium/reconciler.prom >>/var/log/terrarium/reconciler.log 2>&1 || echo "terrarium-reconciler: exit $? (failed provisioning); see /var/log/terrarium/reconciler.log and terrarium-reconciler -c /etc/terrarium/terrarium.ini --status"; }
