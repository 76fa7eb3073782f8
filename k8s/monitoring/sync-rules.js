#!/usr/bin/env node
'use strict';
// Writes prometheusrule.yaml from rules/almanac.rules.yml, so the Prometheus Operator object
// carries exactly the groups that `promtool test rules` checked. Run after editing the rules:
//   node k8s/monitoring/sync-rules.js
// With --check it only compares and exits 1 on a difference (k8s/ci-checks.sh; Jest checks too).
const fs = require('node:fs');
const path = require('node:path');
const YAML = require('yaml');

const here = __dirname;
const rules = YAML.parse(fs.readFileSync(path.join(here, 'rules/almanac.rules.yml'), 'utf8'));

const object = {
  apiVersion: 'monitoring.coreos.com/v1',
  kind: 'PrometheusRule',
  metadata: {
    name: 'almanac',
    labels: { 'app.kubernetes.io/name': 'almanac', 'app.kubernetes.io/component': 'monitoring' },
  },
  spec: { groups: rules.groups },
};

const header = '# GENERATED from rules/almanac.rules.yml by sync-rules.js: edit the rules file, then run\n' +
  '#   node k8s/monitoring/sync-rules.js\n';
const target = path.join(here, 'prometheusrule.yaml');
const text = header + YAML.stringify(object, { lineWidth: 0 });
if (process.argv.includes('--check')) {
  if (fs.readFileSync(target, 'utf8') !== text) {
    process.stderr.write('prometheusrule.yaml is out of date: run `node k8s/monitoring/sync-rules.js`\n');
    process.exit(1);
  }
} else {
  fs.writeFileSync(target, text);
}
