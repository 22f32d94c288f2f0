DROP DATABASE IF EXISTS subx;
CREATE DATABASE subx;
\c subx
CREATE EXTENSION fpsketch;
DO $$ BEGIN
 FOR i IN 1..20 LOOP
  EXECUTE format('CREATE TABLE f%s (k int primary key, v int) USING fpsketch', i);
  EXECUTE format('INSERT INTO f%s SELECT g, 0 FROM generate_series(1,1000) g', i);
  EXECUTE format('CREATE TABLE h%s (k int primary key, v int) USING heap', i);
  EXECUTE format('INSERT INTO h%s SELECT g, 0 FROM generate_series(1,1000) g', i);
 END LOOP;
END $$;
CREATE OR REPLACE FUNCTION sub_reads(p int) RETURNS int LANGUAGE plpgsql AS $$
DECLARE s int := 0; x int;
BEGIN
  BEGIN SELECT v INTO x FROM f1 WHERE k = p; s := s + x; SELECT v INTO x FROM h1 WHERE k = p; s := s + x; EXCEPTION WHEN division_by_zero THEN NULL; END;
  BEGIN SELECT v INTO x FROM f2 WHERE k = p; s := s + x; SELECT v INTO x FROM h2 WHERE k = p; s := s + x; EXCEPTION WHEN division_by_zero THEN NULL; END;
  BEGIN SELECT v INTO x FROM f3 WHERE k = p; s := s + x; SELECT v INTO x FROM h3 WHERE k = p; s := s + x; EXCEPTION WHEN division_by_zero THEN NULL; END;
  BEGIN SELECT v INTO x FROM f4 WHERE k = p; s := s + x; SELECT v INTO x FROM h4 WHERE k = p; s := s + x; EXCEPTION WHEN division_by_zero THEN NULL; END;
  BEGIN SELECT v INTO x FROM f5 WHERE k = p; s := s + x; SELECT v INTO x FROM h5 WHERE k = p; s := s + x; EXCEPTION WHEN division_by_zero THEN NULL; END;
  BEGIN SELECT v INTO x FROM f6 WHERE k = p; s := s + x; SELECT v INTO x FROM h6 WHERE k = p; s := s + x; EXCEPTION WHEN division_by_zero THEN NULL; END;
  BEGIN SELECT v INTO x FROM f7 WHERE k = p; s := s + x; SELECT v INTO x FROM h7 WHERE k = p; s := s + x; EXCEPTION WHEN division_by_zero THEN NULL; END;
  BEGIN SELECT v INTO x FROM f8 WHERE k = p; s := s + x; SELECT v INTO x FROM h8 WHERE k = p; s := s + x; EXCEPTION WHEN division_by_zero THEN NULL; END;
  BEGIN SELECT v INTO x FROM f9 WHERE k = p; s := s + x; SELECT v INTO x FROM h9 WHERE k = p; s := s + x; EXCEPTION WHEN division_by_zero THEN NULL; END;
  BEGIN SELECT v INTO x FROM f10 WHERE k = p; s := s + x; SELECT v INTO x FROM h10 WHERE k = p; s := s + x; EXCEPTION WHEN division_by_zero THEN NULL; END;
  BEGIN SELECT v INTO x FROM f11 WHERE k = p; s := s + x; SELECT v INTO x FROM h11 WHERE k = p; s := s + x; EXCEPTION WHEN division_by_zero THEN NULL; END;
  BEGIN SELECT v INTO x FROM f12 WHERE k = p; s := s + x; SELECT v INTO x FROM h12 WHERE k = p; s := s + x; EXCEPTION WHEN division_by_zero THEN NULL; END;
  BEGIN SELECT v INTO x FROM f13 WHERE k = p; s := s + x; SELECT v INTO x FROM h13 WHERE k = p; s := s + x; EXCEPTION WHEN division_by_zero THEN NULL; END;
  BEGIN SELECT v INTO x FROM f14 WHERE k = p; s := s + x; SELECT v INTO x FROM h14 WHERE k = p; s := s + x; EXCEPTION WHEN division_by_zero THEN NULL; END;
  BEGIN SELECT v INTO x FROM f15 WHERE k = p; s := s + x; SELECT v INTO x FROM h15 WHERE k = p; s := s + x; EXCEPTION WHEN division_by_zero THEN NULL; END;
  BEGIN SELECT v INTO x FROM f16 WHERE k = p; s := s + x; SELECT v INTO x FROM h16 WHERE k = p; s := s + x; EXCEPTION WHEN division_by_zero THEN NULL; END;
  BEGIN SELECT v INTO x FROM f17 WHERE k = p; s := s + x; SELECT v INTO x FROM h17 WHERE k = p; s := s + x; EXCEPTION WHEN division_by_zero THEN NULL; END;
  BEGIN SELECT v INTO x FROM f18 WHERE k = p; s := s + x; SELECT v INTO x FROM h18 WHERE k = p; s := s + x; EXCEPTION WHEN division_by_zero THEN NULL; END;
  BEGIN SELECT v INTO x FROM f19 WHERE k = p; s := s + x; SELECT v INTO x FROM h19 WHERE k = p; s := s + x; EXCEPTION WHEN division_by_zero THEN NULL; END;
  BEGIN SELECT v INTO x FROM f20 WHERE k = p; s := s + x; SELECT v INTO x FROM h20 WHERE k = p; s := s + x; EXCEPTION WHEN division_by_zero THEN NULL; END;
 RETURN s;
END $$;
VACUUM ANALYZE;
