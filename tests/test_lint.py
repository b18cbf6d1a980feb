# SPDX-License-Identifier: GPL-2.0
from pathlib import Path

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



def test_a_finding_that_names_nothing_is_justified_by_quoting_it():
	f = lint.Finding('checkpatch', '0006.patch', 'WARNING',
			 'added, moved or deleted file(s), does MAINTAINERS '
			 'need updating? [#181: | new file mode 100644]')
	quoted = ('Subject: x\n\ncheckpatch asks "added, moved or deleted\n'
		  'file(s), does MAINTAINERS need updating?": no, F: covers '
		  'them.\n---\n diff')
	assert lint.justified(f, quoted)
	assert not lint.justified(f, 'Subject: x\n\ncheckpatch is happy\n---\n')
	assert not lint.justified(f, 'Subject: x\n\nadded, moved or deleted '
				  'file(s), does MAINTAINERS need updating?\n---\n')

HTMLDOCS = '''Using alabaster theme
/k/Documentation/userspace-api/netlink/specs.rst:18: WARNING: undefined label: 'specs' [ref.ref]
/k/Documentation/userspace-api/perfctr.rst:61: WARNING: Inline emphasis start-string without end-string. [docutils]
/k/Documentation/userspace-api/perfctr.rst: WARNING: document isn't included in any toctree [toc.not_included]
/k/include/uapi/linux/perfctr.h:40: ERROR: Unexpected indentation. [docutils]
'''

TOUCHED = ['Documentation/userspace-api/perfctr.rst',
	   'Documentation/userspace-api/index.rst',
	   'include/uapi/linux/perfctr.h']


def test_htmldocs_keeps_only_the_series_warnings():
	f = lint.parse_htmldocs(HTMLDOCS, Path('/k'), TOUCHED)
	assert [(x.where, x.level) for x in f] == [
		('Documentation/userspace-api/perfctr.rst:61', 'WARNING'),
		('Documentation/userspace-api/perfctr.rst', 'WARNING'),
		('include/uapi/linux/perfctr.h:40', 'ERROR')]


def test_htmldocs_fails_when_the_page_is_not_built(fake_ops, tmp_path):
	sphinx = tmp_path / 'sphinx-build'
	sphinx.write_text('')
	ops = fake_ops(answers=[('htmldocs', (0, 'build succeeded.\n'))])
	r = lint.htmldocs(Path('/k'), tmp_path / 'o', 2, TOUCHED, ops, sphinx)
	assert [(x.where, x.level) for x in r.failed] == [
		('Documentation/userspace-api/perfctr.rst', 'ERROR'),
		('Documentation/userspace-api/index.rst', 'ERROR')]
	# with the pages there, the same run is clean
	for name in ('index', 'perfctr'):
		page = tmp_path / 'o/Documentation/output/userspace-api' / \
			f'{name}.html'
		page.parent.mkdir(parents=True, exist_ok=True)
		page.write_text('<html>')
	r = lint.htmldocs(Path('/k'), tmp_path / 'o', 2, TOUCHED, ops, sphinx)
	assert r.failed == []


def test_htmldocs_names_a_missing_sphinx(fake_ops, tmp_path):
	r = lint.htmldocs(Path('/k'), tmp_path / 'o', 2, TOUCHED, fake_ops(),
			  tmp_path / 'nope')
	assert 'bootstrap' in r.failed[0].text
