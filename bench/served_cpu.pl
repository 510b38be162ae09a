#!/usr/bin/perl
# bench/served_cpu.pl OUT CMD ARGS...: run CMD as the socket-activated server of a [ CMD ]
# endpoint and write its CPU time (user + system seconds, clock-tick resolution) to OUT
# when it exits, so that a copy's server and copier can be charged apart.
#
# The copier starts this in place of the server: the listening socket (fd 3) and
# LISTEN_FDS pass through, and LISTEN_PID is set to the server's own pid, which the server
# checks. libnbd ends its server with SIGTERM when it closes the connection: passed on.
# Perl, not Python: it starts in a few milliseconds, and the copy's wall includes it.
use strict;
use warnings;
use POSIX ();

my ($out, @argv) = @ARGV;
die "usage: served_cpu.pl OUT CMD [ARGS...]\n" unless defined $out && @argv;
my $pid = fork() // die "served_cpu.pl: fork: $!\n";
if ($pid == 0) {
  $ENV{LISTEN_PID} = $$;
  exec { $argv[0] } @argv or POSIX::_exit(127);
}
$SIG{TERM} = $SIG{INT} = sub { kill $_[0], $pid };
while (waitpid($pid, 0) != $pid) { }
my $status = $?;
my (undef, undef, $child_user, $child_system) = times;
open my $f, '>', $out or die "served_cpu.pl: $out: $!\n";
printf $f "%.6f\n", $child_user + $child_system;
close $f or die "served_cpu.pl: $out: $!\n";
# Ended by the signal libnbd sends: a normal end for a server.
exit(($status & 127) ? 0 : $status >> 8);
