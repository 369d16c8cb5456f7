// Scores a cache-tests results file: node score.mjs SUITE_DIR RESULTS.json
// prints {"required":[passed,total],"optimal":[...],"check":[...],"failed":[...]}
// counting results that are true, browser-only tests left out.
import fs from 'fs'
import path from 'path'
import { pathToFileURL } from 'url'

const [suite, resultsFile] = process.argv.slice(2)
const { default: tests } = await import(pathToFileURL(path.join(suite, 'tests/index.mjs')))
const results = JSON.parse(fs.readFileSync(resultsFile, 'utf8'))
const out = { required: [0, 0], optimal: [0, 0], check: [0, 0], failed: [] }
for (const s of tests) {
  for (const t of s.tests) {
    if (t.browser_only) continue
    const kind = t.kind || 'required'
    out[kind][1]++
    if (results[t.id] === true) out[kind][0]++
    else if (kind !== 'check') out.failed.push(`${kind} ${t.id}: ${JSON.stringify(results[t.id])}`)
  }
}
console.log(JSON.stringify(out))
