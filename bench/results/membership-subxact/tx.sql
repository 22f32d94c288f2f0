\set k random(1, 1000)
SELECT sub_reads(:k);
