# SPDX-License-Identifier: GPL-2.0
"""The built reviewers' site, read in a real browser.

Opens every page of a Sphinx build in headless Chromium (Debian's
chromium, driven by Playwright, which downloads no browser of its own)
at a 1280 px wide window and reports, page by page: console errors and
uncaught exceptions, failed loads, horizontal overflow of the page
(a table or code block may scroll inside itself, the page may not),
internal links whose page or #fragment does not exist, and patch pages
without their diff (a highlighted diff block for every file the page
lists).  Screenshots of the pages a person should look at are written
beside the build: whole pages, but for a patch page the window at its
first diff of a file linked to the design.
"""

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Set
from urllib.parse import unquote, urldefrag, urlparse

from .errors import InfraError

WIDTH = 1280
HEIGHT = 900
CHROMIUM = '/usr/bin/chromium'
# page (relative to the html dir) -> screenshot name
SCREENSHOTS = {'index.html': 'index.png', 'patches/0001.html': 'patch-0001.png',
	       'results.html': 'results.png', 'bench.html': 'bench.png'}


@dataclass
class PageReport:
	page: str
	console_errors: List[str] = field(default_factory=list)
	overflow_px: int = 0		# how far the page is wider than the window
	widest: str = ''		# the element that sticks out furthest
	links: List[str] = field(default_factory=list)	# internal hrefs
	ids: Set[str] = field(default_factory=set)
	diff_files: int = -1		# patch pages: files with a diff block
	listed_files: int = -1		# patch pages: files the page lists


@dataclass
class SiteReport:
	pages: Dict[str, PageReport]
	problems: List[str]
	screenshots: List[Path]


def _pages(html_dir: Path) -> List[str]:
	"""Every page, the index and search pages too; not the copies of
	the sources and the theme's files (_sources, _static)."""
	return sorted(str(p.relative_to(html_dir)) for p in html_dir.rglob('*.html')
		      if not str(p.relative_to(html_dir)).startswith('_'))


MEASURE = '''() => {
  const w = window.innerWidth;
  let widest = '', right = 0;
  for (const el of document.body.querySelectorAll('*')) {
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.right <= right) continue;
    // inside something that scrolls horizontally: not the page's problem
    let p = el.parentElement, clipped = false;
    while (p && p !== document.body) {
      const s = getComputedStyle(p);
      if (['auto', 'scroll', 'hidden'].includes(s.overflowX)) { clipped = true; break; }
      p = p.parentElement;
    }
    if (clipped) continue;
    right = r.right;
    widest = el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') +
             (el.className && typeof el.className === 'string' ? '.' + el.className.split(' ')[0] : '');
  }
  return {scroll: document.documentElement.scrollWidth, width: w, widest, right,
          links: [...document.querySelectorAll('a[href]')].map(a => a.getAttribute('href')),
          ids: [...document.querySelectorAll('[id]')].map(e => e.id),
          anchors: [...document.querySelectorAll('a[name]')].map(e => e.getAttribute('name')),
          diffs: document.querySelectorAll('details.patch-file div.highlight-diff pre').length,
          diffFiles: [...document.querySelectorAll('details.patch-file')].filter(
             d => /^(\\+|-|@@)/m.test(d.querySelector('pre') ? d.querySelector('pre').textContent : '')).length,
          listed: document.querySelectorAll('#files-changed li').length};
}'''


def check(html_dir: Path, shots: Optional[Path] = None,
	  chromium: str = CHROMIUM) -> SiteReport:
	"""Open every page; return what was seen and the problems found."""
	html_dir = html_dir.resolve()
	try:
		from playwright.sync_api import Error as PWError
		from playwright.sync_api import sync_playwright
	except ImportError:
		raise InfraError('playwright is not installed',
				 'run ./bootstrap (it installs it)') from None
	if not Path(chromium).exists():
		raise InfraError(f'{chromium} is missing',
				 'apt-get install chromium (./bootstrap does)')
	if not (html_dir / 'index.html').exists():
		raise InfraError(f'{html_dir} holds no built site',
				 'inv docs first')
	reports: Dict[str, PageReport] = {}
	written: List[Path] = []
	if shots:
		shots.mkdir(parents=True, exist_ok=True)
	with sync_playwright() as pw:
		try:
			browser = pw.chromium.launch(executable_path=chromium,
						     headless=True)
		except PWError as e:
			raise InfraError(f'chromium does not start: '
					 f'{str(e).splitlines()[0]}') from None
		try:
			page = browser.new_page(viewport={'width': WIDTH,
							  'height': HEIGHT})
			current: List[str] = []
			page.on('console', lambda m: current.append(
				f'console {m.type}: {m.text}')
				if m.type == 'error' else None)
			page.on('pageerror', lambda e: current.append(
				f'uncaught: {e}'))
			page.on('requestfailed', lambda r: current.append(
				f'failed to load {r.url}'))
			for rel in _pages(html_dir):
				current.clear()
				resp = page.goto((html_dir / rel).as_uri(),
						 wait_until='load')
				if resp is not None and not resp.ok:
					current.append(f'status {resp.status}')
				m = page.evaluate(MEASURE)
				rep = PageReport(
					page=rel, console_errors=list(current),
					overflow_px=max(0, m['scroll'] - m['width']),
					widest=m['widest'], links=m['links'],
					ids=set(m['ids']) | set(m['anchors']))
				if re.fullmatch(r'patches/\d{4}\.html', rel):
					rep.diff_files = m['diffFiles']
					rep.listed_files = m['listed']
				reports[rel] = rep
				if shots and rel in SCREENSHOTS:
					out = shots / SCREENSHOTS[rel]
					diff = page.locator(
						'details.patch-file:has(.design)')
					if not diff.count():
						diff = page.locator('details.patch-file')
					if diff.count():
						# a patch page is long: show its diff
						diff.first.evaluate('e => e.scrollIntoView()')
						page.screenshot(path=str(out))
					else:
						page.screenshot(path=str(out), full_page=True)
					written.append(out)
		finally:
			browser.close()
	return SiteReport(reports, problems(html_dir, reports), written)


def problems(html_dir: Path, reports: Dict[str, PageReport]) -> List[str]:
	out = []
	for rel, r in sorted(reports.items()):
		out += [f'{rel}: {e}' for e in r.console_errors]
		if r.overflow_px > 0:
			out.append(f'{rel}: {r.overflow_px} px wider than a '
				   f'{WIDTH} px window ({r.widest} sticks out)')
		if r.diff_files >= 0 and (r.listed_files <= 0 or
					  r.diff_files != r.listed_files):
			out.append(f'{rel}: lists {r.listed_files} files but holds '
				   f'a diff for {r.diff_files}')
		for href in r.links:
			u = urlparse(href)
			if u.scheme or href.startswith('//') or href.startswith('mailto:'):
				continue	# external: not this site's to check
			path, frag = urldefrag(href)
			target = (html_dir / rel).parent / unquote(path) if path \
				else html_dir / rel
			target = target.resolve()
			if target.is_dir():
				target = target / 'index.html'
			if not target.exists():
				out.append(f'{rel}: link {href} leads nowhere')
				continue
			if frag and target.suffix == '.html':
				key = str(target.relative_to(html_dir.resolve()))
				ids = reports[key].ids if key in reports else \
					set(re.findall(r'\sid="([^"]+)"',
						       target.read_text(errors='replace')))
				if unquote(frag) not in ids:
					out.append(f'{rel}: link {href}: no #{frag} '
						   f'in {key}')
	return out
