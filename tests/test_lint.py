# SPDX-License-Identifier: GPL-2.0
from pytools import lint

CHECKPATCH = '''WARNING: Use #include <linux/nmi.h> instead of <asm/nmi.h>
#162: FILE: drivers/perfctr/x86.c:31:
+#include <asm/nmi.h>
CHECK: Please don't use multiple blank lines
#325: FILE: drivers/perfctr/x86.c:194:
+
'''


def test_parse_checkpatch():
	f = lint.parse_checkpatch('0002.patch', CHECKPATCH)
	assert [(x.level, x.where) for x in f] == [('WARNING', '0002.patch'),
						   ('CHECK', '0002.patch')]
	assert 'x86.c:31' in f[0].text
	r = lint.LintResult(findings=f)
	assert len(r.failed) == 1


def test_compiler_gates_tell_sparse_from_gcc(fake_ops, tmp_path):
	out = ('/t/drivers/perfctr/x86.c:10:5: warning: symbol \'x\' was not '
	       'declared. Should it be static?\n'
	       '/t/drivers/perfctr/init.c:3:1: warning: no previous prototype '
	       'for \'f\' [-Wmissing-prototypes]\n'
	       '/t/kernel/fork.c:1:1: warning: elsewhere [-Wfoo]\n')
	ops = fake_ops(answers=[('C=2', (0, out))])
	r = lint.compiler_gates(['make'], 'drivers/perfctr', ops, tmp_path / 'l')
	assert [(f.gate, f.where) for f in r.findings] == [
		('sparse', '/t/drivers/perfctr/x86.c:10'),
		('W=1', '/t/drivers/perfctr/init.c:3')]


def test_a_warning_the_commit_message_answers_is_justified():
	f = lint.parse_checkpatch('0002.patch', CHECKPATCH)[0]
	patch = ('Subject: x\n\ncheckpatch suggests <linux/nmi.h> for <asm/nmi.h>;'
		 ' the driver needs asm/nmi.h because ...\n---\n diff')
	assert lint.justified(f, patch)
	assert not lint.justified(f, 'Subject: x\n\nno word of it\n---\n')
	assert not lint.justified(f, 'Subject: x\n\n---\ncheckpatch <linux/nmi.h> <asm/nmi.h>')
